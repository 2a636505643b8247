import type { LinkingMessages } from '../en.js'

const ru: LinkingMessages = {
  signInMethods: 'Способы входа',
  loadingMethods: 'Загружаем способы входа…',
  signInToManage: 'Войдите в приложение, чтобы увидеть и изменить способы входа.',
  kindEmail: 'Почта',
  kindPasskey: 'Ключ доступа',
  kindWallet: 'Кошелёк',
  kindOAuth: 'Соцсеть',
  linkedOn: 'Привязан {date}',
  remove: 'Удалить',
  removeMethod: 'Удалить {label}',
  onlyMethod: 'Это ваш единственный способ входа. Добавьте другой, прежде чем удалять его.',
  addMethod: 'Добавить способ входа',
  emailToLink: 'Адрес почты для добавления',
  sendCode: 'Отправить код',
  typeCodeInFrame: 'Введите в окне код, отправленный на {email}.',
  signInWalletToLink: 'Подпишите сообщение в {name}',
  linking: 'Привязываем…',
  methodLinked: '{label} привязан. Теперь можно входить с ним.',
  removing: 'Удаляем…',
  methodRemoved: '{label} удалён.',
  secondFactor: 'Второй фактор',
  mfaOff: 'Второй фактор не настроен.',
  mfaOn: 'Приложение-аутентификатор настроено.',
  setUpTotp: 'Настроить приложение-аутентификатор',
  settingUpTotp: 'Настраиваем приложение-аутентификатор…',
  totpEnrolled: 'Приложение-аутентификатор настроено. Храните коды восстановления в надёжном месте.',
  methodsStatus: 'Состояние способов входа',
}

export default ru
