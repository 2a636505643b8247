import type { LinkingMessages } from '../en.js'

const ja: LinkingMessages = {
  signInMethods: 'サインイン方法',
  loadingMethods: 'サインイン方法を読み込んでいます…',
  signInToManage: 'サインイン方法を表示・変更するには、アプリにサインインしてください。',
  kindEmail: 'メール',
  kindPasskey: 'パスキー',
  kindWallet: 'ウォレット',
  kindOAuth: 'ソーシャルアカウント',
  linkedOn: '{date} に連携',
  remove: '削除',
  removeMethod: '{label} を削除',
  onlyMethod: 'これが唯一のサインイン方法です。削除する前に別の方法を追加してください。',
  addMethod: 'サインイン方法を追加',
  emailToLink: '追加するメールアドレス',
  sendCode: 'コードを送信',
  typeCodeInFrame: '{email} に送られたコードをダイアログに入力してください。',
  signInWalletToLink: '{name} でメッセージに署名してください',
  linking: '連携しています…',
  methodLinked: '{label} を連携しました。これでサインインできます。',
  removing: '削除しています…',
  methodRemoved: '{label} を削除しました。',
  secondFactor: '2 要素目',
  mfaOff: '2 要素目は設定されていません。',
  mfaOn: '認証アプリが設定されています。',
  setUpTotp: '認証アプリを設定',
  settingUpTotp: '認証アプリを設定しています…',
  totpEnrolled: '認証アプリを設定しました。リカバリーコードは安全な場所に保管してください。',
  methodsStatus: 'サインイン方法の状態',
}

export default ja
