// The kms's emails in the user's language: the sign-in code, the sign-in and the recovery
// credentials, in the 16
// locales of the app's UI (@latchkey/react's catalogues). The caller names the locale (a Latchkey
// extension field of init_otp, email_auth and init_user_email_recovery); anything else is English. Arabic and
// Hebrew mails are right to left. Every text the caller gives (the app's name) is escaped in HTML.
import type { Mail } from './mail.js'

/** The locales the mails are written in: those of the app's UI. */
export const MAIL_LOCALES = ['en', 'es', 'pt', 'fr', 'de', 'it', 'ru', 'tr', 'ar', 'he', 'hi', 'zh', 'ja', 'ko', 'id', 'vi'] as const
export type MailLocale = (typeof MAIL_LOCALES)[number]

const RIGHT_TO_LEFT: readonly MailLocale[] = ['ar', 'he']

/**
 * One locale's texts. Placeholders: `{app}` the app's name, `{code}` the code, `{minutes}` a
 * whole number of minutes, `{origins}` where the code may be typed. Every key is required, so a
 * locale missing one fails the typecheck.
 */
type MailCatalogue = {
  codeSubject: string
  codeLine: string
  codeExpires: string
  onlyOn: string
  noOneAsks: string
  recoverySubject: string
  recoveryLine: string
  recoveryWorks: string
  recoveryIgnore: string
  signInSubject: string
  signInLine: string
  signInLink: string
}

const CATALOGUES: Record<MailLocale, MailCatalogue> = {
  en: {
    codeSubject: 'Your {app} sign-in code',
    codeLine: 'Your {app} sign-in code is {code}.',
    codeExpires: 'It expires in {minutes} minutes.',
    onlyOn: 'Only enter it on {origins}.',
    noOneAsks: 'No one will ask you for it by phone, chat or email.',
    recoverySubject: 'Recover your {app} account',
    recoveryLine: 'Your recovery credential for {app}:',
    recoveryWorks: 'It works for {minutes} minutes.',
    recoveryIgnore: 'If you did not ask to recover your account, ignore this email.',
    signInSubject: 'Sign in to {app}',
    signInLine: 'Your sign-in credential for {app}:',
    signInLink: 'Sign in',
  },
  es: {
    codeSubject: 'Tu código de acceso a {app}',
    codeLine: 'Tu código de acceso a {app} es {code}.',
    codeExpires: 'Caduca en {minutes} minutos.',
    onlyOn: 'Introdúcelo solo en {origins}.',
    noOneAsks: 'Nadie te lo pedirá por teléfono, chat ni correo electrónico.',
    recoverySubject: 'Recupera tu cuenta de {app}',
    recoveryLine: 'Tu credencial de recuperación para {app}:',
    recoveryWorks: 'Sirve durante {minutes} minutos.',
    recoveryIgnore: 'Si no pediste recuperar tu cuenta, ignora este correo.',
    signInSubject: 'Inicia sesión en {app}',
    signInLine: 'Tu credencial de acceso a {app}:',
    signInLink: 'Iniciar sesión',
  },
  pt: {
    codeSubject: 'Seu código de acesso ao {app}',
    codeLine: 'Seu código de acesso ao {app} é {code}.',
    codeExpires: 'Ele expira em {minutes} minutos.',
    onlyOn: 'Digite-o apenas em {origins}.',
    noOneAsks: 'Ninguém vai pedi-lo por telefone, chat ou e-mail.',
    recoverySubject: 'Recupere sua conta do {app}',
    recoveryLine: 'Sua credencial de recuperação do {app}:',
    recoveryWorks: 'Ela vale por {minutes} minutos.',
    recoveryIgnore: 'Se você não pediu para recuperar sua conta, ignore este e-mail.',
    signInSubject: 'Entre no {app}',
    signInLine: 'Sua credencial de acesso ao {app}:',
    signInLink: 'Entrar',
  },
  fr: {
    codeSubject: 'Votre code de connexion à {app}',
    codeLine: 'Votre code de connexion à {app} est {code}.',
    codeExpires: 'Il expire dans {minutes} minutes.',
    onlyOn: 'Saisissez-le uniquement sur {origins}.',
    noOneAsks: 'Personne ne vous le demandera par téléphone, chat ou e-mail.',
    recoverySubject: 'Récupérez votre compte {app}',
    recoveryLine: 'Votre identifiant de récupération pour {app} :',
    recoveryWorks: 'Il est valable {minutes} minutes.',
    recoveryIgnore: 'Si vous n’avez pas demandé à récupérer votre compte, ignorez cet e-mail.',
    signInSubject: 'Connectez-vous à {app}',
    signInLine: 'Votre identifiant de connexion à {app} :',
    signInLink: 'Se connecter',
  },
  de: {
    codeSubject: 'Ihr Anmeldecode für {app}',
    codeLine: 'Ihr Anmeldecode für {app} lautet {code}.',
    codeExpires: 'Er läuft in {minutes} Minuten ab.',
    onlyOn: 'Geben Sie ihn nur auf {origins} ein.',
    noOneAsks: 'Niemand wird Sie per Telefon, Chat oder E-Mail danach fragen.',
    recoverySubject: 'Stellen Sie Ihr {app}-Konto wieder her',
    recoveryLine: 'Ihr Wiederherstellungsnachweis für {app}:',
    recoveryWorks: 'Er gilt {minutes} Minuten lang.',
    recoveryIgnore: 'Wenn Sie keine Wiederherstellung angefordert haben, ignorieren Sie diese E-Mail.',
    signInSubject: 'Bei {app} anmelden',
    signInLine: 'Ihr Anmeldenachweis für {app}:',
    signInLink: 'Anmelden',
  },
  it: {
    codeSubject: 'Il tuo codice di accesso a {app}',
    codeLine: 'Il tuo codice di accesso a {app} è {code}.',
    codeExpires: 'Scade tra {minutes} minuti.',
    onlyOn: 'Inseriscilo solo su {origins}.',
    noOneAsks: 'Nessuno te lo chiederà per telefono, chat o e-mail.',
    recoverySubject: 'Recupera il tuo account {app}',
    recoveryLine: 'La tua credenziale di recupero per {app}:',
    recoveryWorks: 'È valida per {minutes} minuti.',
    recoveryIgnore: 'Se non hai chiesto di recuperare il tuo account, ignora questa e-mail.',
    signInSubject: 'Accedi a {app}',
    signInLine: 'La tua credenziale di accesso a {app}:',
    signInLink: 'Accedi',
  },
  ru: {
    codeSubject: 'Ваш код входа в {app}',
    codeLine: 'Ваш код входа в {app}: {code}.',
    codeExpires: 'Код действует {minutes} мин.',
    onlyOn: 'Вводите его только на {origins}.',
    noOneAsks: 'Никто не будет спрашивать его у вас по телефону, в чате или по почте.',
    recoverySubject: 'Восстановление аккаунта {app}',
    recoveryLine: 'Ваши данные для восстановления доступа к {app}:',
    recoveryWorks: 'Они действуют {minutes} мин.',
    recoveryIgnore: 'Если вы не запрашивали восстановление аккаунта, проигнорируйте это письмо.',
    signInSubject: 'Вход в {app}',
    signInLine: 'Ваши данные для входа в {app}:',
    signInLink: 'Войти',
  },
  tr: {
    codeSubject: '{app} giriş kodunuz',
    codeLine: '{app} giriş kodunuz: {code}.',
    codeExpires: '{minutes} dakika içinde geçerliliğini yitirir.',
    onlyOn: 'Yalnızca {origins} adresinde girin.',
    noOneAsks: 'Hiç kimse bunu sizden telefon, sohbet veya e-posta ile istemez.',
    recoverySubject: '{app} hesabınızı kurtarın',
    recoveryLine: '{app} için kurtarma kimlik bilginiz:',
    recoveryWorks: '{minutes} dakika boyunca geçerlidir.',
    recoveryIgnore: 'Hesabınızı kurtarmayı siz istemediyseniz bu e-postayı yok sayın.',
    signInSubject: '{app} uygulamasına giriş yapın',
    signInLine: '{app} için giriş kimlik bilginiz:',
    signInLink: 'Giriş yap',
  },
  ar: {
    codeSubject: 'رمز تسجيل الدخول إلى {app}',
    codeLine: 'رمز تسجيل الدخول إلى {app} هو {code}.',
    codeExpires: 'تنتهي صلاحيته بعد {minutes} دقيقة.',
    onlyOn: 'لا تُدخله إلا على {origins}.',
    noOneAsks: 'لن يطلبه منك أحد عبر الهاتف أو الدردشة أو البريد الإلكتروني.',
    recoverySubject: 'استعادة حسابك في {app}',
    recoveryLine: 'بيانات الاستعادة الخاصة بك في {app}:',
    recoveryWorks: 'تبقى صالحة لمدة {minutes} دقيقة.',
    recoveryIgnore: 'إذا لم تطلب استعادة حسابك، فتجاهل هذه الرسالة.',
    signInSubject: 'تسجيل الدخول إلى {app}',
    signInLine: 'بيانات تسجيل الدخول الخاصة بك في {app}:',
    signInLink: 'تسجيل الدخول',
  },
  he: {
    codeSubject: 'קוד הכניסה שלך ל-{app}',
    codeLine: 'קוד הכניסה שלך ל-{app} הוא {code}.',
    codeExpires: 'תוקפו יפוג בעוד {minutes} דקות.',
    onlyOn: 'הזן אותו רק ב-{origins}.',
    noOneAsks: 'אף אחד לא יבקש אותו ממך בטלפון, בצ׳אט או בדוא״ל.',
    recoverySubject: 'שחזור החשבון שלך ב-{app}',
    recoveryLine: 'אישור השחזור שלך עבור {app}:',
    recoveryWorks: 'הוא תקף למשך {minutes} דקות.',
    recoveryIgnore: 'אם לא ביקשת לשחזר את החשבון, התעלם מהודעה זו.',
    signInSubject: 'כניסה ל-{app}',
    signInLine: 'אישור הכניסה שלך ל-{app}:',
    signInLink: 'כניסה',
  },
  hi: {
    codeSubject: 'आपका {app} साइन-इन कोड',
    codeLine: 'आपका {app} साइन-इन कोड {code} है।',
    codeExpires: 'यह {minutes} मिनट में समाप्त हो जाएगा।',
    onlyOn: 'इसे केवल {origins} पर दर्ज करें।',
    noOneAsks: 'कोई भी आपसे इसे फ़ोन, चैट या ईमेल पर नहीं मांगेगा।',
    recoverySubject: 'अपना {app} खाता पुनर्प्राप्त करें',
    recoveryLine: '{app} के लिए आपका पुनर्प्राप्ति क्रेडेंशियल:',
    recoveryWorks: 'यह {minutes} मिनट तक मान्य है।',
    recoveryIgnore: 'यदि आपने खाता पुनर्प्राप्ति का अनुरोध नहीं किया है, तो इस ईमेल को अनदेखा करें।',
    signInSubject: '{app} में साइन इन करें',
    signInLine: '{app} के लिए आपका साइन-इन क्रेडेंशियल:',
    signInLink: 'साइन इन करें',
  },
  zh: {
    codeSubject: '您的 {app} 登录验证码',
    codeLine: '您的 {app} 登录验证码是 {code}。',
    codeExpires: '验证码将在 {minutes} 分钟后失效。',
    onlyOn: '请只在 {origins} 上输入。',
    noOneAsks: '任何人都不会通过电话、聊天或电子邮件向您索要它。',
    recoverySubject: '恢复您的 {app} 账户',
    recoveryLine: '您的 {app} 恢复凭据：',
    recoveryWorks: '有效期为 {minutes} 分钟。',
    recoveryIgnore: '如果您没有申请恢复账户，请忽略此邮件。',
    signInSubject: '登录 {app}',
    signInLine: '您的 {app} 登录凭据：',
    signInLink: '登录',
  },
  ja: {
    codeSubject: '{app} のサインインコード',
    codeLine: '{app} のサインインコードは {code} です。',
    codeExpires: '有効期限は {minutes} 分です。',
    onlyOn: '{origins} でのみ入力してください。',
    noOneAsks: '電話、チャット、メールでこのコードを尋ねることはありません。',
    recoverySubject: '{app} アカウントの復元',
    recoveryLine: '{app} の復元用認証情報:',
    recoveryWorks: '有効期限は {minutes} 分です。',
    recoveryIgnore: 'アカウントの復元を依頼していない場合は、このメールを無視してください。',
    signInSubject: '{app} にサインイン',
    signInLine: '{app} のサインイン用認証情報:',
    signInLink: 'サインイン',
  },
  ko: {
    codeSubject: '{app} 로그인 코드',
    codeLine: '{app} 로그인 코드는 {code}입니다.',
    codeExpires: '{minutes}분 후에 만료됩니다.',
    onlyOn: '{origins}에서만 입력하세요.',
    noOneAsks: '누구도 전화, 채팅, 이메일로 이 코드를 묻지 않습니다.',
    recoverySubject: '{app} 계정 복구',
    recoveryLine: '{app} 복구 자격 증명:',
    recoveryWorks: '{minutes}분 동안 유효합니다.',
    recoveryIgnore: '계정 복구를 요청하지 않았다면 이 이메일을 무시하세요.',
    signInSubject: '{app} 로그인',
    signInLine: '{app} 로그인 자격 증명:',
    signInLink: '로그인',
  },
  id: {
    codeSubject: 'Kode masuk {app} Anda',
    codeLine: 'Kode masuk {app} Anda adalah {code}.',
    codeExpires: 'Kode ini kedaluwarsa dalam {minutes} menit.',
    onlyOn: 'Masukkan hanya di {origins}.',
    noOneAsks: 'Tidak ada yang akan memintanya melalui telepon, chat, atau email.',
    recoverySubject: 'Pulihkan akun {app} Anda',
    recoveryLine: 'Kredensial pemulihan {app} Anda:',
    recoveryWorks: 'Berlaku selama {minutes} menit.',
    recoveryIgnore: 'Jika Anda tidak meminta pemulihan akun, abaikan email ini.',
    signInSubject: 'Masuk ke {app}',
    signInLine: 'Kredensial masuk {app} Anda:',
    signInLink: 'Masuk',
  },
  vi: {
    codeSubject: 'Mã đăng nhập {app} của bạn',
    codeLine: 'Mã đăng nhập {app} của bạn là {code}.',
    codeExpires: 'Mã hết hạn sau {minutes} phút.',
    onlyOn: 'Chỉ nhập mã trên {origins}.',
    noOneAsks: 'Không ai sẽ hỏi bạn mã này qua điện thoại, trò chuyện hay email.',
    recoverySubject: 'Khôi phục tài khoản {app} của bạn',
    recoveryLine: 'Thông tin khôi phục {app} của bạn:',
    recoveryWorks: 'Có hiệu lực trong {minutes} phút.',
    recoveryIgnore: 'Nếu bạn không yêu cầu khôi phục tài khoản, hãy bỏ qua email này.',
    signInSubject: 'Đăng nhập vào {app}',
    signInLine: 'Thông tin đăng nhập {app} của bạn:',
    signInLink: 'Đăng nhập',
  },
}

/**
 * The mail locale for what a caller asked: a BCP 47 tag (`pt-BR`, `zh-Hant`), or an
 * Accept-Language list (`fr-CH, fr;q=0.9, en;q=0.8`) read in order of preference. The first
 * language we write in wins; none (or nothing asked): English.
 */
export function mailLocale(asked: string | undefined): MailLocale {
  if (!asked) return 'en'
  const ranked = asked
    .split(',')
    .map((part, index) => {
      const [tag = '', ...options] = part.trim().split(';')
      const q = options.map((option) => /^\s*q=([0-9.]+)\s*$/.exec(option)?.[1]).find((value) => value !== undefined)
      return { language: tag.trim().split('-')[0]!.toLowerCase(), q: q === undefined ? 1 : Number(q), index }
    })
    .filter((entry) => entry.q > 0)
    .sort((a, b) => b.q - a.q || a.index - b.index)
  return ranked.map((entry) => entry.language).find((language): language is MailLocale => (MAIL_LOCALES as readonly string[]).includes(language)) ?? 'en'
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`)

const fill = (template: string, values: Record<string, string>) => template.replace(/\{(\w+)\}/g, (whole, key: string) => values[key] ?? whole)

/** `texts` as one mail: the text part as lines, the HTML part as paragraphs in the locale's language and direction. */
function compose(locale: MailLocale, to: string, subject: string, paragraphs: { text: string; html: string }[]): Mail {
  const dir = RIGHT_TO_LEFT.includes(locale) ? 'rtl' : 'ltr'
  return {
    to,
    subject,
    text: paragraphs.map((paragraph) => paragraph.text).join('\n\n'),
    html: `<div lang="${locale}" dir="${dir}">${paragraphs.map((paragraph) => `<p>${paragraph.html}</p>`).join('')}</div>`,
  }
}

/** A paragraph of `template` with `values`: plain in the text part, escaped in HTML, `strong` values bold. */
function paragraph(template: string, values: Record<string, string>, strong: readonly string[] = []) {
  const html = Object.fromEntries(
    Object.entries(values).map(([key, value]) => [key, strong.includes(key) ? `<strong>${escapeHtml(value)}</strong>` : escapeHtml(value)]),
  )
  return { text: fill(template, values), html: fill(escapeHtml(template), html) }
}

/** Where the code may be typed, and that no one asks for it: the last paragraph of every mail with a secret. */
function warning(locale: MailLocale, origins: readonly string[]) {
  const texts = CATALOGUES[locale]
  const listed = new Intl.ListFormat(locale, { type: 'disjunction' }).format(origins)
  const onlyOn = paragraph(texts.onlyOn, { origins: listed }, ['origins'])
  const noOne = paragraph(texts.noOneAsks, {})
  return { text: `${onlyOn.text} ${noOne.text}`, html: `${onlyOn.html} ${noOne.html}` }
}

/**
 * The sign-in code's mail. The code stays out of the subject, which lock screens and notifications show.
 *
 * @example
 * codeMail({ to, appName: 'Demo', code: '123456', minutes: 5, origins: ['https://app.example'], locale: 'fr' })
 */
export function codeMail(input: { to: string; appName: string; code: string; minutes: number; origins: readonly string[]; locale: MailLocale }): Mail {
  const texts = CATALOGUES[input.locale]
  const values = { app: input.appName, code: input.code, minutes: String(input.minutes) }
  return compose(input.locale, input.to, fill(texts.codeSubject, values), [
    paragraph(`${texts.codeLine} ${texts.codeExpires}`, values, ['code']),
    warning(input.locale, input.origins),
  ])
}

/**
 * The recovery credential's mail.
 *
 * @example
 * recoveryMail({ to, appName: 'Demo', credential, minutes: 15, origins, locale: 'ar' })
 */
export function recoveryMail(input: {
  to: string
  appName: string
  credential: string
  minutes: number
  origins: readonly string[]
  locale: MailLocale
}): Mail {
  const texts = CATALOGUES[input.locale]
  const values = { app: input.appName, minutes: String(input.minutes) }
  return compose(input.locale, input.to, fill(texts.recoverySubject, values), [
    paragraph(texts.recoveryLine, values),
    { text: input.credential, html: `<code>${escapeHtml(input.credential)}</code>` },
    paragraph(`${texts.recoveryWorks} ${texts.recoveryIgnore}`, values),
    warning(input.locale, input.origins),
  ])
}

/**
 * The sign-in credential's mail (email_auth): the bundle, or a link that carries it when the app
 * gave a magic-link template.
 *
 * @example
 * signInMail({ to, appName: 'Demo', credential: bundle, link: undefined, minutes: 15, origins, locale: 'de' })
 */
export function signInMail(input: {
  to: string
  appName: string
  credential: string
  link: string | undefined
  minutes: number
  origins: readonly string[]
  locale: MailLocale
}): Mail {
  const texts = CATALOGUES[input.locale]
  const values = { app: input.appName, minutes: String(input.minutes) }
  return compose(input.locale, input.to, fill(texts.signInSubject, values), [
    paragraph(texts.signInLine, values),
    input.link
      ? { text: input.link, html: `<a href="${escapeHtml(input.link)}">${escapeHtml(texts.signInLink)}</a>` }
      : { text: input.credential, html: `<code>${escapeHtml(input.credential)}</code>` },
    paragraph(texts.recoveryWorks, values),
    warning(input.locale, input.origins),
  ])
}
